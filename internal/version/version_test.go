package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromSettings(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name     string
		settings []debug.BuildSetting
		rev      string // "" = nil
		modified string // "" = nil
	}{
		{"no VCS information", nil, "", ""},
		{"clean tree", []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}, rev, "false"},
		{"modified tree", []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}, rev, "true"},
		{"unreadable modified", []debug.BuildSetting{{Key: "vcs.modified", Value: "maybe"}}, "", ""},
	} {
		b := fromSettings(c.settings)
		if got := str(b.Revision); got != c.rev {
			t.Errorf("%s: revision %q, want %q", c.name, got, c.rev)
		}
		got := ""
		if b.Modified != nil {
			got = map[bool]string{true: "true", false: "false"}[*b.Modified]
		}
		if got != c.modified {
			t.Errorf("%s: modified %q, want %q", c.name, got, c.modified)
		}
		if b.GoVersion != runtime.Version() || b.OS != runtime.GOOS || b.Arch != runtime.GOARCH {
			t.Errorf("%s: %s %s/%s, want the running toolchain and platform", c.name, b.GoVersion, b.OS, b.Arch)
		}
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
