package kafka

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL/PLAIN: with Options.Tokens set, a connection must authenticate
// before anything but ApiVersions; the password is one of the server's
// tokens and its rights decide what the connection may do.

const plain = "PLAIN"

func (c *conn) saslHandshake(req *kmsg.SASLHandshakeRequest) *kmsg.SASLHandshakeResponse {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = []string{plain}
	if req.Mechanism != plain {
		resp.ErrorCode = errUnsupportedSASLMechanism
		return resp
	}
	c.handshake = true
	return resp
}

func (c *conn) saslAuthenticate(req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, error) {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	if !c.handshake {
		return nil, fmt.Errorf("SaslAuthenticate without a PLAIN handshake")
	}
	if c.s.tokens == nil {
		c.authed = true // nothing to check: every caller may do everything
		return resp, nil
	}
	parts := bytes.SplitN(req.SASLAuthBytes, []byte{0}, 3)
	if len(parts) == 3 {
		if r, ok := c.s.rightsOf(string(parts[2])); ok {
			c.authed, c.rights = true, r
			return resp, nil
		}
	}
	msg := "unknown token"
	resp.ErrorCode, resp.ErrorMessage = errSASLAuthenticationFailed, &msg
	c.authFailed = true
	c.s.log.Info("kafka: SASL authentication failed", "remote", c.nc.RemoteAddr().String())
	return resp, nil
}
