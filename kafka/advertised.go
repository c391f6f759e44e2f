package kafka

import (
	"fmt"
	"net"
	"strconv"
)

// checkAdvertised refuses an advertised address clients could not dial:
// not HOST:PORT, no host or an unspecified one (0.0.0.0, ::), which a
// client would take for itself, or a port that is not 1..65535.
func checkAdvertised(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("%q: name a host clients can dial", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port must be 1..65535", addr)
	}
	return nil
}
