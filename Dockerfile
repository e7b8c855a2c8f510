# Build the manager binary
# Override BASE_IMAGE to build from another registry, e.g. docker.io/library/golang:1.26
ARG BASE_IMAGE=golang:1.26
FROM ${BASE_IMAGE} AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Copy the Go Modules manifests and download the dependencies first, so that source changes do not
# invalidate the layer of downloaded modules.
COPY go.mod go.sum ./
COPY pkg/go.mod pkg/go.sum pkg/
RUN go mod download

# Copy only the packages the manager is built from (.dockerignore keeps out tests and test data).
COPY cmd/ cmd/
COPY api/ api/
COPY internal/ internal/
COPY pkg/ pkg/

# A static binary (no cgo) for the distroless base. GOARCH has no default so that the binary matches
# the platform docker builds for (BuildKit sets TARGETARCH).
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o manager ./cmd

# Use distroless as minimal base image to package the manager binary
# Refer to https://github.com/GoogleContainerTools/distroless for more details
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532

ENTRYPOINT ["/manager"]
