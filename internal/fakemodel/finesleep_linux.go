package fakemodel

import (
	"syscall"
	"time"
)

// sleepFine sleeps d on the calling goroutine's thread with nanosleep,
// whose wake-up is precise to microseconds (the runtime's timers wake
// the process through epoll, whose timeout counts whole milliseconds).
// It is used only for the last fineSleep of a reply's latency, so it
// holds a thread for at most that long.
func sleepFine(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem // a signal woke it early: sleep what is left
	}
}
