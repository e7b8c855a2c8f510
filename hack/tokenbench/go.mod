// The comparison benchmarks of pkg/token (see doc.go): a module of its own so that go-jose,
// golang-jwt and Tink stay out of pkg's module graph.
module github.com/mrtr-dev/mrtr-operator/hack/tokenbench

go 1.26.0

require (
	github.com/go-jose/go-jose/v4 v4.1.9
	github.com/golang-jwt/jwt/v5 v5.3.1
	github.com/mrtr-dev/mrtr-operator/pkg v0.0.0-00010101000000-000000000000
	github.com/tink-crypto/tink-go/v2 v2.9.0
)

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	golang.org/x/crypto v0.53.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

replace github.com/mrtr-dev/mrtr-operator/pkg => ../../pkg
