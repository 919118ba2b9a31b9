//go:build !linux

package fakemodel

import "time"

// sleepFine sleeps d (on Linux with nanosleep, see finesleep_linux.go).
func sleepFine(d time.Duration) { time.Sleep(d) }
