// Package respcache is the evaluator's response cache (spec protocol.md
// §11): a SQLite database, responses.sqlite, that maps a deterministic
// call to the model's reply so that re-running the same settings (or an
// oracle mode whose early turns are identical) re-asks nothing known.
//
// The key is a SHA-256 over everything that determines a greedy reply:
// the endpoint called (normalised, without credentials), the server's
// identity (what its preflight reported, or for a run without preflight
// the sorted endpoint list), the provider, the
// endpoint's model id, the full message list (roles,
// texts and images by content hash), the sampling parameters and the
// prompt-profile hash. Only temperature-0 calls are cached and never
// errors or empty answers; the runner enforces both through Cacheable.
// The database runs in WAL mode with a busy timeout, so several processes
// (shards of one run) can share it.
package respcache

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/appdb"
	"github.com/chexpercept/chexpercept/internal/provider"
	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// FileName is the database file inside the cache directory.
const FileName = "responses.sqlite"

// DefaultDir is $XDG_CACHE_HOME/chexpercept, else ~/.cache/chexpercept.
func DefaultDir() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "chexpercept"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("response cache: no XDG_CACHE_HOME and no home directory: %w", err)
	}
	return filepath.Join(home, ".cache", "chexpercept"), nil
}

// ErrLinkedDefault is the refusal of a default cache folder that is a
// symbolic link.
var ErrLinkedDefault = errors.New("the default cache folder is not used through a link")

// CheckDefaultDir refuses the default cache folder (DefaultDir: named by
// no one on the command line) when it exists and is a symbolic link or
// not a folder. The folder "chexpercept" there is this tool's own; a link
// in its place was planted, and following it would write the cache into
// whatever folder it leads to. $XDG_CACHE_HOME and ~/.cache themselves
// may be links (a user's choice, like a cache directory they name, which
// is followed); the databases inside are never opened through a link
// (appdb.Open of a cache). A link is refused with ErrLinkedDefault.
func CheckDefaultDir(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("cache directory %s: %w", dir, safefile.Reason(err))
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("cache directory %s is a symbolic link; %w: remove the link, or name the folder it leads to as the cache directory", dir, ErrLinkedDefault)
	case !fi.IsDir():
		return fmt.Errorf("cache directory %s is not a directory (%s)", dir, safefile.KindOf(fi.Mode()))
	}
	return nil
}

// Entry is a cached reply.
type Entry struct {
	Text         string          `json:"text"`
	Reasoning    string          `json:"reasoning,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Usage        *runmodel.Usage `json:"usage,omitempty"`
}

// Cache is an open response cache, safe for concurrent use.
type Cache struct {
	db   *appdb.DB
	path string
}

// dbSpec is the response cache's database: a cache (appdb) holding the
// one table responses, with the columns every release wrote. It is
// created in place by the first process that opens it and shared by
// concurrent processes (the shards of a Slurm array, say); the file and
// its side files are never opened through a link or as a FIFO, and a file
// that holds anything else (another application's database, named by
// mistake) is refused before anything writes to it and left as it was.
func dbSpec() appdb.Spec {
	return appdb.Spec{Kind: "response cache", Name: "chexpercept cache database",
		Cache: &appdb.Table{Name: "responses", Columns: []string{"key", "entry", "created_at"}},
		Schema: `CREATE TABLE IF NOT EXISTS responses (
		key TEXT PRIMARY KEY,
		entry TEXT NOT NULL,
		created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
	)`,
		Synchronous: "NORMAL"}
}

// Open opens or creates dir/responses.sqlite.
func Open(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("response cache: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := appdb.Open(path, dbSpec(), appdb.ReadWrite)
	if err != nil {
		return nil, err
	}
	return &Cache{db: db, path: path}, nil
}

// Path is the database file.
func (c *Cache) Path() string { return c.path }

// Close closes the database.
func (c *Cache) Close() error { return c.db.Close() }

// Get looks key up; ok is false on a miss.
func (c *Cache) Get(ctx context.Context, key string) (e Entry, ok bool, err error) {
	var s string
	err = c.db.QueryRowContext(ctx, `SELECT entry FROM responses WHERE key = ?`, key).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("response cache %s: lookup: %w", c.path, appdb.Explain(c.path, err))
	}
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return Entry{}, false, fmt.Errorf("response cache %s: entry %s: %w", c.path, key[:12], err)
	}
	return e, true, nil
}

// Put stores e under key. Empty answers are refused: they must be
// re-asked on the next run, not replayed.
func (c *Cache) Put(ctx context.Context, key string, e Entry) error {
	if e.Text == "" {
		return fmt.Errorf("response cache: refusing to store an empty answer")
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = c.db.ExecContext(ctx, `INSERT OR REPLACE INTO responses (key, entry) VALUES (?, ?)`, key, string(b))
	if err != nil {
		return fmt.Errorf("response cache %s: store: %w", c.path, appdb.Explain(c.path, err))
	}
	return nil
}

// Len counts the entries (tests, diagnostics).
func (c *Cache) Len(ctx context.Context) (int, error) {
	var n int
	err := c.db.QueryRowContext(ctx, `SELECT count(*) FROM responses`).Scan(&n)
	return n, err
}

// Cacheable reports whether a call with these sampling parameters may be
// cached at all: only deterministic (temperature 0) calls.
func Cacheable(s runmodel.Sampling) bool { return s.Deterministic() }

// Key computes the cache key of a call made to endpoint (normalised by
// Endpoint: what the client knows) and answered by the server of
// identity (the hex SHA-256 of its runmodel.Identity: what the server
// says). Both enter, so a server that claims another's identity never
// fills entries replayed for that other server's endpoint. Every
// variable-length field is length-prefixed so that different splits of
// the same bytes never collide; images enter by their SHA-256. A call
// whose server identity is unknown ("") has no key: Key returns "" and
// nothing may be cached or replayed for it.
func Key(endpoint, identity, providerName, modelID string, msgs []provider.Message, s runmodel.Sampling, profileHash string) string {
	if identity == "" {
		return ""
	}
	h := sha256.New()
	put := func(b string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write([]byte(b))
	}
	// Version 2 added the server identity, version 3 the endpoint:
	// entries of earlier versions are never found again, so none is
	// replayed (they stay in the file until the cache is deleted).
	put("chexpercept/respcache/3")
	put(endpoint)
	put(identity)
	put(providerName)
	put(modelID)
	samp, _ := json.Marshal(s) // struct of scalars: cannot fail
	put(string(samp))
	put(profileHash)
	put(fmt.Sprint(len(msgs)))
	for _, m := range msgs {
		put(string(m.Role))
		put(m.Text)
		put(fmt.Sprint(len(m.Images)))
		for _, im := range m.Images {
			put(im.SHA256)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ControlKey is the key of a call of a run under the image control
// control (results.Control) whose call key is key: a key of its own, so
// that a control run's replies are stored and replayed apart from the
// model run's even where the two send the same bytes. It is key itself
// when control is "" (a run without a control keeps its keys), and ""
// when key is "" (nothing may be cached).
func ControlKey(key, control string) string {
	if key == "" || control == "" {
		return key
	}
	sum := sha256.Sum256([]byte("chexpercept/respcache/control/" + strconv.Itoa(len(control)) + ":" + control + "/" + key))
	return hex.EncodeToString(sum[:])
}

// Endpoint is the form of an endpoint URL that enters the key: scheme
// and host in lower case, the scheme's default port dropped, the path
// cleaned of a trailing slash, and no user info, query or fragment (no
// credential reaches the key). "" (the backend's default endpoint) and
// the in-process baseline are given by the caller as names that are no
// URL ("default:openai", "in-process"). An unparsable URL (which no
// client reaches) enters as it is; only its hash is ever stored.
func Endpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "raw:" + raw
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	p := strings.TrimRight(path.Clean("/"+u.Path), "/")
	return scheme + "://" + host + p
}
