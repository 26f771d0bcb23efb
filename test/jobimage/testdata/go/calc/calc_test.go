package calc

import (
	"testing"

	"example.com/check"
)

func TestAdd(t *testing.T) { check.Equal(t, Add(2, 3), 5) }
