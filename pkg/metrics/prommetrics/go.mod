// The Prometheus adapter of the library's metrics: a module of its own, so that
// github.com/mrtr-dev/mrtr-operator/pkg keeps no dependency on a metrics client.
module github.com/mrtr-dev/mrtr-operator/pkg/metrics/prommetrics

go 1.26.0

require (
	github.com/mrtr-dev/mrtr-operator/pkg v0.0.0-00010101000000-000000000000
	github.com/prometheus/client_golang v1.25.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/mrtr-dev/mrtr-operator/pkg => ../..
