package version

import (
	"runtime/debug"
	"strings"
	"sync"
)

// ModulePath is Ferry's Go module, whose version the build information
// records.
const ModulePath = "github.com/ferryhq/ferry"

// StampVariable is the linker symbol that `-ldflags -X` sets:
//
//	go build -ldflags "-X github.com/ferryhq/ferry/internal/version.stamped=v0.1.0" ./cmd/ferry
const StampVariable = ModulePath + "/internal/version.stamped"

// Devel is the version of a build that knows no better: not stamped, and
// built from a checkout rather than a tagged module.
const Devel = "devel"

// stamped is set at link time (StampVariable); empty otherwise.
var stamped string

var resolved = sync.OnceValue(func() string {
	info, _ := debug.ReadBuildInfo()
	return resolve(stamped, info)
})

// String returns the version of this build (the package doc says where it
// comes from). It never returns the empty string.
func String() string { return resolved() }

// resolve picks the version from the stamp, then from info (nil when the
// binary carries no build information), then Devel.
func resolve(stamp string, info *debug.BuildInfo) string {
	if s := strings.TrimSpace(stamp); s != "" {
		return s
	}
	if info == nil {
		return Devel
	}
	if info.Main.Path == ModulePath {
		if v := moduleVersion(&info.Main); v != "" {
			return v
		}
		return Devel
	}
	// Ferry built into someone else's binary (the library, or a function
	// main of their own): the version their go.mod requires.
	for _, dep := range info.Deps {
		if dep.Path == ModulePath {
			if v := moduleVersion(dep); v != "" {
				return v
			}
		}
	}
	return Devel
}

// moduleVersion is m's version, or "" when Go recorded none: "(devel)" for
// a main module built without VCS information, or a replacement by a local
// directory.
func moduleVersion(m *debug.Module) string {
	if m.Replace != nil {
		m = m.Replace
	}
	if m.Version == "" || m.Version == "(devel)" {
		return ""
	}
	return m.Version
}
