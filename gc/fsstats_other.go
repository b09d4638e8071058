//go:build !linux

package gc

import (
	"errors"
	"fmt"
)

func statfs(path string) (capacity, available uint64, err error) {
	return 0, 0, fmt.Errorf("statfs %s: %w", path, errors.ErrUnsupported)
}
