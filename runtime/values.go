package runtime

import "time"

// noValues is an empty flag set, for verbs bulkhead calls itself.
type noValues struct{}

func (noValues) IsSet(string) bool             { return false }
func (noValues) String(string) string          { return "" }
func (noValues) Bool(string) bool              { return false }
func (noValues) Int(string) int                { return 0 }
func (noValues) StringSlice(string) []string   { return nil }
func (noValues) Duration(string) time.Duration { return 0 }
