package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Settings are the configuration's changes_* keys: where deleted
// containers' workspace changes are kept, for how long, and what reading
// one container's changes may cost.
type Settings struct {
	ChangesDir       string
	ChangesRetention string
	ChangesMaxBytes  string
	ChangesMaxFiles  int
	ChangesMaxDepth  int
	ChangesQuota     string
}

func nowUTC() time.Time { return time.Now().UTC() }

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
