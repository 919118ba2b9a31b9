# Reference values of the noncentral chi-square, F and t distributions at 50
# significant digits with mpmath: chi-square and F by the Poisson series of
# regularized incomplete gamma/beta functions summed until the Poisson mass
# left is below 1e-45; t (and F on 1 df) by integrating over the chi-square
# of the denominator.
from mpmath import mp, mpf, gammainc, betainc, exp, log, loggamma, quad, erfc, sqrt, inf, ncdf

mp.dps = 50

def pois_series(mu, term):
    mu = mpf(mu)
    total = mpf(0); mass = mpf(0); j = 0
    while True:
        w = exp(-mu + j*log(mu) - loggamma(j+1)) if mu > 0 else (mpf(1) if j == 0 else mpf(0))
        total += w*term(j); mass += w; j += 1
        if 1 - mass < mpf(10)**-45 and j > mu: return total

def chi2_upper(k, lam, x):
    k, lam, x = mpf(k), mpf(lam), mpf(x)
    return pois_series(lam/2, lambda j: gammainc(k/2+j, x/2, inf, regularized=True))

def f_upper(d1, d2, lam, f):
    d1, d2, lam, f = mpf(d1), mpf(d2), mpf(lam), mpf(f)
    y = d2/(d1*f + d2)
    return pois_series(lam/2, lambda j: betainc(d2/2, d1/2+j, 0, y, regularized=True))

def chi2_density(nu, w):
    return exp((nu/2-1)*log(w) - w/2 - (nu/2)*log(2) - loggamma(nu/2))

def t_upper(nu, delta, x):
    nu, delta, x = mpf(nu), mpf(delta), mpf(x)
    g = lambda w: chi2_density(nu, w) * ncdf(delta - x*sqrt(w/nu))
    return quad(g, [0, nu/4, nu, 2*nu, 4*nu, 16*nu, inf])

def f1_upper(nu, lam, f):
    nu, lam, f = mpf(nu), mpf(lam), mpf(f)
    d = sqrt(lam)
    g = lambda w: chi2_density(nu, w) * (ncdf(d - sqrt(f*w/nu)) + ncdf(-sqrt(f*w/nu) - d))
    return quad(g, [0, nu/4, nu, 2*nu, 4*nu, 16*nu, inf])

print("chi2")
for k, lam, x in [(1,0,3.841458820694124),(1,7.8673,3.84),(1,100,80),(3,2.5,4),(10,50,30),(10,50,90),(2,1000,900),(0.5,3,0.2),(4,0.001,0.001),(1,10000,10500),(7,20,1e-3),(2,0.5,60)]:
    print(k, lam, x, mp.nstr(chi2_upper(k, lam, x), 20))
print("F")
for d1, d2, lam, f in [(1,62.707,8.2096,3.99),(1,9,10.0487,5.117),(2,15.26,4,3),(1,1e6,10,3.84),(3,4,25,6),(1,1,15,161),(1,2000,20,3.85),(5,40,0,2.45),(1,4,0.5,30),(2,7.5,30,8),(3,20,2,15),(1,9,0.1,50)]:
    print(d1, d2, lam, f, mp.nstr(f_upper(d1, d2, lam, f), 20))
print("F1 by integral")
for nu, lam, f in [(62.707,8.2096,3.99),(9,10.0487,5.117),(1,15,161)]:
    print(nu, lam, f, mp.nstr(f1_upper(nu, lam, f), 20))
print("t")
for nu, delta, x in [(10,2,1.8),(15.26,2.5,2.13),(4,-1,0.5),(30,0,2.04),(5,3,-1),(100,10,8),(2.5,0.5,3),(9,4.2,2.262)]:
    print(nu, delta, x, mp.nstr(t_upper(nu, delta, x), 20))
