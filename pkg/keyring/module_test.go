package keyring_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The library is its own Go module so that an MCP server importing it does not inherit the
// operator's dependencies: nothing of Kubernetes may enter its module graph.
func TestModuleHasNoKubernetesDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "all").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, out)
	}
	mods := strings.Fields(string(out))
	if len(mods) == 0 || mods[0] != "github.com/mrtr-dev/mrtr-operator/pkg" {
		t.Fatalf("go list -m all ran in the wrong module: %.200s", out)
	}
	for _, m := range mods {
		if strings.HasPrefix(m, "k8s.io/") || strings.HasPrefix(m, "sigs.k8s.io/") {
			t.Errorf("the library's module graph holds %s", m)
		}
	}
}
