package remote

import "google.golang.org/grpc"

// FromStatus exposes fromStatus to the external tests.
var FromStatus = fromStatus

// RegisterWithoutStreams registers s's Broker service without its
// streaming RPCs on reg, as a server of an older version would serve it.
func RegisterWithoutStreams(s *Server, reg grpc.ServiceRegistrar) {
	d := s.desc
	d.Streams = nil
	reg.RegisterService(&d, s.svc)
}
