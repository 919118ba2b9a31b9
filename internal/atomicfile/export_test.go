package atomicfile

import "github.com/chexpercept/chexpercept/internal/job"

// WriteSyncedBy is WriteFile with syncDir syncing the target's folder
// (nil: WriteFileNoSync), so a test can make the directory sync fail.
func WriteSyncedBy(j *job.Job, name string, data []byte, syncDir func(string) error) error {
	return write(j, name, data, syncDir)
}
