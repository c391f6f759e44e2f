package otel_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEngineLinksNoSDK: the engine, its remote adapter and its Prometheus
// metrics do not depend on this package or on the OpenTelemetry SDK and
// exporters. (Badger itself imports the OpenTelemetry API packages.)
func TestEngineLinksNoSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/equeue-go/equeue", "github.com/equeue-go/equeue/remote",
		"github.com/equeue-go/equeue/metrics").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, pkg := range strings.Fields(string(out)) {
		assert.False(t, pkg == "github.com/equeue-go/equeue/otel", "the engine imports package otel")
		assert.False(t, strings.HasPrefix(pkg, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(pkg, "go.opentelemetry.io/otel/exporters"),
			"the engine links %s", pkg)
	}
}
