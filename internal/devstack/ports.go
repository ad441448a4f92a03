package devstack

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// CheckPortFree refuses a fixed port another process holds, before anything
// is started: the Temporal CLI would otherwise retry for minutes and fail
// on another port with "connection refused", the cause only in its log.
func CheckPortFree(port int, what string) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err == nil {
		return l.Close()
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("port %d for the %s is already in use: stop what holds it (a stack left running by `make up`: `make down`) or choose another port (UI_PORT=%d make demo, or --ui-port)",
			port, what, port+1)
	}
	return fmt.Errorf("port %d for the %s: %w", port, what, err)
}
