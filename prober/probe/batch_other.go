//go:build !linux

package probe

import (
	"net"
	"net/netip"
	"syscall"
)

// A Batch needs Linux's socket calls; elsewhere Start* always return false.

const batchOS = false

type batchSockaddr struct{}

func sockOpen(*batchSockaddr, netip.AddrPort) (int, string, syscall.Errno) {
	return -1, "socket", syscall.EINVAL
}

func sockSend(int, []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }
func sockRecv(int, []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }
func sockClose(int)                             {}
func sockLocal(int) net.Addr                    { return nil }
