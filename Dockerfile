# Container image of the chexpercept command line, used by deploy/kubernetes/.
#
# Build and push from the repository root (any OCI builder works):
#
#   docker build -t ghcr.io/<org>/chexpercept:<tag> .
#   docker push ghcr.io/<org>/chexpercept:<tag>
#
# then replace ghcr.io/YOUR-ORG/chexpercept:latest in deploy/kubernetes/*.yaml.
#
# The image holds only the binary: no benchmark, results or response cache.
# Mount them (the manifests mount a PersistentVolumeClaim at /data). .git is
# not in the build context, so `chexpercept version` prints no revision; tag
# images with the commit instead.

# Keep in step with the go directive of go.mod (checked by
# go test ./cmd/chexpercept -run Deploy).
FROM golang:1.26 AS build
WORKDIR /src
# Modules first, in their own layer, so that editing code does not refetch them.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Pure Go (no cgo): the binary runs on a static base image.
RUN CGO_ENABLED=0 go build -trimpath -o /out/chexpercept ./cmd/chexpercept

# distroless/static has CA certificates (HTTPS APIs) and a non-root user,
# and nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/chexpercept /chexpercept
USER nonroot:nonroot
ENTRYPOINT ["/chexpercept"]
