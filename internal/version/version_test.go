package version

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	main := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: v}}
	}
	library := func(dep debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/shop", Version: "v1.2.3"},
			Deps: []*debug.Module{{Path: "github.com/aws/aws-sdk-go-v2", Version: "v1.48.0"}, &dep},
		}
	}
	for _, tc := range []struct {
		name  string
		stamp string
		info  *debug.BuildInfo
		want  string
	}{
		{"StampWins", "v0.2.0-3-gcd6075f-dirty", main("v0.1.0"), "v0.2.0-3-gcd6075f-dirty"},
		{"StampTrimmed", " v0.2.0\n", nil, "v0.2.0"},
		{"TaggedModule", "", main("v0.3.0"), "v0.3.0"},
		{"PseudoVersion", "", main("v0.3.1-0.20261201100000-cd6075fe5ce2+dirty"), "v0.3.1-0.20261201100000-cd6075fe5ce2+dirty"},
		{"CheckoutWithoutVCS", "", main("(devel)"), Devel},
		{"NoBuildInfo", "", nil, Devel},
		{"Library", "", library(debug.Module{Path: ModulePath, Version: "v0.4.0"}), "v0.4.0"},
		{"LibraryReplacedByDirectory", "", library(debug.Module{Path: ModulePath, Version: "v0.4.0",
			Replace: &debug.Module{Path: "../ferry"}}), Devel},
		{"LibraryReplacedByFork", "", library(debug.Module{Path: ModulePath, Version: "v0.4.0",
			Replace: &debug.Module{Path: "example.com/ferry-fork", Version: "v0.4.1"}}), "v0.4.1"},
		{"OtherMainWithoutFerry", "", &debug.BuildInfo{Main: debug.Module{Path: "example.com/x", Version: "v9.0.0"}}, Devel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, resolve(tc.stamp, tc.info))
		})
	}
}
