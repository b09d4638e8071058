//go:build linux

package probe

import (
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// The Batch's socket calls: raw system calls on non-blocking sockets. None
// of them blocks (close included: SO_LINGER 0 resets at once), so they
// skip the runtime's entersyscall/exitsyscall, which costs as much as the
// call itself.

const batchOS = true

// batchSockaddr holds an IPv4 or IPv6 socket address.
type batchSockaddr = syscall.RawSockaddrInet6

// batchLinger is SO_LINGER {on, 0}: close sends RST and leaves no TIME_WAIT.
var batchLinger = syscall.Linger{Onoff: 1, Linger: 0}

// sockOpen opens a non-blocking socket with SO_LINGER 0 and starts
// connecting it to ap; sa keeps the address for the kernel. It returns the
// socket (-1 if none), and, if a call failed, which one and its errno;
// EINPROGRESS means the connect goes on.
func sockOpen(sa *batchSockaddr, ap netip.AddrPort) (int, string, syscall.Errno) {
	family, size := setSockaddr(sa, ap)
	r, _, e := syscall.RawSyscall(syscall.SYS_SOCKET, family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if e != 0 {
		return -1, "socket", e
	}
	fd := int(r)
	_, _, e = syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, r, syscall.SOL_SOCKET, syscall.SO_LINGER,
		uintptr(unsafe.Pointer(&batchLinger)), unsafe.Sizeof(batchLinger), 0)
	if e != 0 {
		return fd, "setsockopt", e
	}
	_, _, e = syscall.RawSyscall(syscall.SYS_CONNECT, r, uintptr(unsafe.Pointer(sa)), size)
	return fd, "connect", e
}

// setSockaddr stores ap in sa as the kernel reads it; it returns the
// address family and the address's size.
func setSockaddr(sa *batchSockaddr, ap netip.AddrPort) (family, size uintptr) {
	family, size = syscall.AF_INET6, syscall.SizeofSockaddrInet6
	var port *uint16
	if a := ap.Addr(); a.Is4() {
		s4 := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		*s4 = syscall.RawSockaddrInet4{Family: syscall.AF_INET, Addr: a.As4()}
		family, size, port = syscall.AF_INET, syscall.SizeofSockaddrInet4, &s4.Port
	} else {
		*sa = syscall.RawSockaddrInet6{Family: syscall.AF_INET6, Addr: a.As16()}
		port = &sa.Port
	}
	pb := (*[2]byte)(unsafe.Pointer(port)) // network byte order
	pb[0], pb[1] = byte(ap.Port()>>8), byte(ap.Port())
	return family, size
}

// sockSend writes b without blocking or SIGPIPE.
func sockSend(fd int, b []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
		syscall.MSG_NOSIGNAL|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// sockRecv reads into b what has arrived, without blocking.
func sockRecv(fd int, b []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
		syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

func sockClose(fd int) {
	_, _, _ = syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fd), 0, 0)
}

// sockLocal is fd's local address, for error messages; nil if unknown.
func sockLocal(fd int) net.Addr {
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return nil
	}
	switch sa := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.TCPAddr{IP: append(net.IP(nil), sa.Addr[:]...), Port: sa.Port}
	case *syscall.SockaddrInet6:
		return &net.TCPAddr{IP: append(net.IP(nil), sa.Addr[:]...), Port: sa.Port}
	}
	return nil
}
