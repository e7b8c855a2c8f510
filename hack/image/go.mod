// Builds the manager's image (make image) with go-containerregistry. A module of its own, as
// hack/promrules is, so that go-containerregistry and its dependencies stay out of the operator's
// go.mod.
module github.com/mrtr-dev/mrtr-operator/hack/image

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
