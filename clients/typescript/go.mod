// The Go side of this package's tests (test/goreplica: keyring.Parse and token.Signed, the
// library's own answers). A module of its own, so that the repository's module does not reach
// into node_modules, whose packages may ship .go files.
module github.com/mrtr-dev/mrtr-operator/clients/typescript

go 1.26.0

replace github.com/mrtr-dev/mrtr-operator/pkg => ../../pkg

require (
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/mrtr-dev/mrtr-operator/pkg v0.0.0-00010101000000-000000000000
)

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)
