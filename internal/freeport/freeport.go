// Package freeport finds a TCP port on loopback for a process the simulator starts (a gate
// replica, Karpenter, a real node's kubelet), which must be told its ports before it runs.
package freeport

import "net"

// Get returns a TCP port on 127.0.0.1 that nothing listens on now. Another process may take
// it before the caller's does; the ports come from the kernel's ephemeral range, so that is
// rare, and the process then fails to start with a clear error.
func Get() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
