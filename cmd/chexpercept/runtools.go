package main

import "time"

// since formats an elapsed time for the commands' closing lines.
func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }
