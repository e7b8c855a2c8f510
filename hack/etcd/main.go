// Command etcd is etcd v3 built from the go.etcd.io/etcd/server/v3 library, for the local control plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
