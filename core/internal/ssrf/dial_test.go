package ssrf

import (
	"errors"
	"testing"
)

func TestCheckDial(t *testing.T) {
	t.Parallel()
	tests := []struct {
		network, address string
		allowed          bool
	}{
		{"tcp4", "8.8.8.8:443", true},
		{"tcp4", "1.1.1.1:80", true},
		{"tcp6", "[2606:4700:4700::1111]:443", true},
		{"tcp6", "[64:ff9b::808:808]:443", true},
		{"tcp4", "127.0.0.1:443", false},
		{"tcp4", "169.254.169.254:80", false},
		{"tcp4", "10.0.0.7:443", false},
		{"tcp4", "0.0.0.0:443", false},
		{"tcp6", "[::1]:443", false},
		{"tcp6", "[::ffff:127.0.0.1]:443", false},
		{"tcp6", "[fe80::1%eth0]:443", false},
		{"tcp6", "[fd00:ec2::254]:80", false},
		{"tcp6", "[64:ff9b::a9fe:a9fe]:80", false},
		{"udp4", "8.8.8.8:53", false},
		{"tcp4", "not-an-address", false},
		{"tcp4", "example.com:443", false},
	}
	for _, tt := range tests {
		err := checkDial(tt.network, tt.address, nil)
		if tt.allowed != (err == nil) {
			t.Errorf("checkDial(%s, %s) = %v, want allowed %v", tt.network, tt.address, err, tt.allowed)
		}
		if err != nil && !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("checkDial(%s, %s) = %v, want it to wrap ErrForbiddenAddress", tt.network, tt.address, err)
		}
	}
}
