//go:build !(linux || darwin || freebsd)

package broker

import "errors"

func diskUsage(string) (total, free int64, err error) {
	return 0, 0, errors.New("disk usage is not available on this operating system")
}
