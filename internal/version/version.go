// Package version reports the program version recorded in build outputs,
// evaluation manifests and reports.
package version

import "runtime/debug"

// Version is the release version. It enters build fingerprints (a new
// version invalidates resumable build state) and every manifest.
const Version = "0.2.0-dev"

// String returns Version plus the VCS revision when the binary carries one.
func String() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return Version + "+" + s.Value[:12]
			}
		}
	}
	return Version
}
