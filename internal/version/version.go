// Package version reports the program version recorded in build outputs,
// evaluation manifests and reports, and the build it came from.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release version. It enters build fingerprints (a new
// version invalidates resumable build state) and every manifest.
const Version = "0.2.0-dev"

// String returns Version plus the VCS revision when the binary carries one.
func String() string {
	if b := Current(); b.Revision != nil && len(*b.Revision) >= 12 {
		return Version + "+" + (*b.Revision)[:12]
	}
	return Version
}

// Build describes the binary: the source revision it was built from and
// whether that tree had uncommitted changes (the Go toolchain embeds both
// when it builds a main package inside a git checkout with VCS stamping
// on, its default; nil when absent), the Go version and the platform.
type Build struct {
	Revision  *string
	Modified  *bool
	GoVersion string
	OS, Arch  string
}

// Current is the running binary's build.
func Current() Build {
	var settings []debug.BuildSetting
	if info, ok := debug.ReadBuildInfo(); ok {
		settings = info.Settings
	}
	return fromSettings(settings)
}

// fromSettings reads vcs.revision and vcs.modified from build settings.
func fromSettings(settings []debug.BuildSetting) Build {
	b := Build{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				v := s.Value
				b.Revision = &v
			}
		case "vcs.modified":
			if s.Value == "true" || s.Value == "false" {
				m := s.Value == "true"
				b.Modified = &m
			}
		}
	}
	return b
}
