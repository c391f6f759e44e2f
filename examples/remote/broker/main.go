// Broker embeds an engine and serves it to remote producers and consumers
// over gRPC until interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "equeue-remote-broker"), "engine directory")
	listen := flag.String("listen", "127.0.0.1:7654", "address to serve on")
	flag.Parse()

	eng, err := equeue.Open(*dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := eng.CreateTopic(context.Background(), "jobs", 4); err != nil && !errors.Is(err, equeue.ErrTopicExists) {
		log.Fatal(err)
	}
	srv, err := remote.NewServer(eng, nil) // add TLS and Tokens for anything beyond loopback
	if err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-stop
		srv.GracefulStop()
	}()
	log.Printf("broker serving %s on %s", *dir, lis.Addr())
	if err := srv.Serve(lis); err != nil {
		log.Print(err)
	}
	if err := eng.Close(); err != nil {
		log.Fatal(err)
	}
	log.Print("broker stopped cleanly")
}
