package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/remote"
)

const envClusterAdmin = "EQUEUE_CLUSTER_ADMIN"

// clusterCommand administers a replicated cluster through a node's
// --cluster-admin address.
func (a *app) clusterCommand() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Administer a replicated cluster (equeue serve --cluster-id)",
		Long: `cluster talks to the administration address (--cluster-admin) of a node
started with "equeue serve --cluster-id". Changes (add, remove,
transfer-leadership) must go to the leader's node; status works on any node
and names the leader.`,
		Example: `  equeue cluster status --admin 127.0.0.1:7851
  equeue cluster add n2 127.0.0.1:7752 --admin 127.0.0.1:7851
  equeue cluster remove n3 --admin 127.0.0.1:7851
  equeue cluster transfer-leadership --admin 127.0.0.1:7851`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&admin, "admin", "", "HOST:PORT of a node's --cluster-admin (default $"+envClusterAdmin+")")
	// call asks the node, waiting up to wait for its answer.
	call := func(ctx context.Context, wait time.Duration, method, path string, q url.Values, out any) error {
		flag := "--admin"
		if admin == "" {
			admin, flag = os.Getenv(envClusterAdmin), "$"+envClusterAdmin
		}
		if admin == "" {
			return usageErrorf("give --admin HOST:PORT, a node's --cluster-admin address")
		}
		if u, err := url.Parse("http://" + admin); !isHostPort(admin) || err != nil || u.Host != admin {
			return usageErrorf("%s %q: want HOST:PORT, a node's --cluster-admin address, e.g. 127.0.0.1:7851", flag, admin)
		}
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		u := "http://" + admin + path
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return err
		}
		if a.token != "" {
			req.Header.Set("Authorization", "Bearer "+a.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("reach %s: %w", admin, err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		if err != nil {
			return err
		}
		if res.StatusCode != http.StatusOK {
			var e struct{ Error string }
			if json.Unmarshal(body, &e) == nil && e.Error != "" {
				return &adminError{code: res.StatusCode, text: e.Error}
			}
			return &adminError{code: res.StatusCode, text: fmt.Sprintf("%s: %s", res.Status, strings.TrimSpace(string(body)))}
		}
		if out != nil {
			return json.Unmarshal(body, out)
		}
		return nil
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show a node's view of the cluster",
		Example: `  equeue cluster status --admin 127.0.0.1:7851
  EQUEUE_CLUSTER_ADMIN=127.0.0.1:7851 equeue cluster status --json`,
		Args: args(cobra.NoArgs),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			var s cluster.Status
			if err := call(cmd.Context(), clusterCallWait, http.MethodGet, "/cluster/status", nil, &s); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "node:\t%s (%s, term %d)\n", s.ID, s.State, s.Term)
			fmt.Fprintf(w, "leader:\t%s %s\n", s.LeaderID, s.LeaderAddr)
			if s.LeaderKafkaAddr != "" {
				fmt.Fprintf(w, "leader's Kafka listener:\t%s\n", s.LeaderKafkaAddr)
			}
			fmt.Fprintf(w, "serving:\t%v\n", s.Serving)
			fmt.Fprintf(w, "lease held:\t%v\n", s.LeaseHeld)
			if s.Removed {
				fmt.Fprintf(w, "removed:\ttrue (the cluster's configuration no longer lists this node; add it again with cluster add)\n")
			}
			if s.Failure != "" {
				fmt.Fprintf(w, "failed:\t%s (left the cluster; reopen the node)\n", s.Failure)
			}
			fmt.Fprintf(w, "log:\tfirst %d, last %d, commit %d, applied %d\n", s.FirstLogIndex, s.LastLogIndex, s.CommitIndex, s.AppliedIndex)
			fmt.Fprintf(w, "leader changes:\t%d (tenures here %d, snapshots installed %d)\n", s.LeaderChanges, s.Tenures, s.SnapshotsInstalled)
			fmt.Fprintln(w, "SERVER\tRAFT ADDRESS\tVOTER")
			for _, sv := range s.Servers {
				fmt.Fprintf(w, "%s\t%s\t%v\n", sv.ID, sv.RaftAddr, sv.Voter)
			}
			return w.Flush()
		}),
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	add := &cobra.Command{
		Use:   "add ID RAFTADDR",
		Short: "Add a voter (ask the leader's node)",
		Example: `  # n2 was started with --cluster-id n2 --cluster-raft 127.0.0.1:7752
  equeue cluster add n2 127.0.0.1:7752 --admin 127.0.0.1:7851`,
		Args: args(cobra.ExactArgs(2)),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := call(cmd.Context(), clusterAddWait, http.MethodPost, "/cluster/add", url.Values{"id": {args[0]}, "raft": {args[1]}}, nil); err != nil {
				return addFailed(args[0], args[1], err)
			}
			fmt.Fprintf(a.stdout, "added %s at %s\n", args[0], args[1])
			return nil
		}),
	}
	remove := &cobra.Command{
		Use:     "remove ID",
		Short:   "Remove a server (ask the leader's node)",
		Example: `  equeue cluster remove n3 --admin 127.0.0.1:7851`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := call(cmd.Context(), clusterCallWait, http.MethodPost, "/cluster/remove", url.Values{"id": {args[0]}}, nil); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "removed %s\n", args[0])
			return nil
		}),
	}
	transfer := &cobra.Command{
		Use:   "transfer-leadership [ID]",
		Short: "Hand leadership to another voter (ask the leader's node)",
		Example: `  # to whichever voter Raft picks
  equeue cluster transfer-leadership --admin 127.0.0.1:7851
  # to n2
  equeue cluster transfer-leadership n2 --admin 127.0.0.1:7851`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if len(args) == 1 {
				q.Set("id", args[0])
			}
			if err := call(cmd.Context(), clusterCallWait, http.MethodPost, "/cluster/transfer", q, nil); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, "leadership transferred")
			return nil
		}),
	}
	cmd.AddCommand(status, add, remove, transfer)
	return cmd
}

// dialCluster connects to the comma-separated nodes of --server and
// follows their leader.
func (a *app) dialCluster() (*remote.ClusterClient, error) {
	tlsConf, err := a.clientTLS()
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, s := range strings.Split(a.server, ",") {
		if s = strings.TrimSpace(s); s != "" {
			addrs = append(addrs, s)
		}
	}
	c, err := remote.DialCluster(addrs, &remote.ClientOptions{TLS: tlsConf, Token: a.token, Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", a.server, err)
	}
	return c, nil
}

// clusterCallWait bounds a call to a node's admin address (the node gives
// a change 30 s), but for cluster add's.
var clusterCallWait = 40 * time.Second

// clusterAddWait bounds cluster add's call. The node answers it once the
// new node caught up and votes, or after 5 minutes (cluster.AdminHandler):
// the command waits longer, since its leaving would end the node's wait,
// and the node would remove the node it was adding again.
var clusterAddWait = 5*time.Minute + 30*time.Second

// adminError is a node's refusal of an admin call: the HTTP status and
// the error text the node gave.
type adminError struct {
	code int
	text string
}

func (e *adminError) Error() string { return e.text }

// peerAuthFailedText starts the text of cluster.ErrPeerAuthFailed, the
// same in the versions before salts, whose leaders say it too.
const peerAuthFailedText = "cluster: the node refused the leader's Raft handshake"

// addFailed says that cluster add of id at raftAddr failed with err, and,
// for a node of another cluster (409 with cluster.ErrForeignCluster's
// text), one that refused the leader's Raft handshake (504 with
// cluster.ErrPeerAuthFailed's) or one that did not catch up in time
// (504), what to do next.
func addFailed(id, raftAddr string, err error) error {
	var advice string
	var ae *adminError
	if errors.As(err, &ae) {
		switch {
		case ae.code == http.StatusConflict && strings.Contains(ae.text, cluster.ErrForeignCluster.Error()):
			advice = "; its directory holds another cluster's data: stop it, empty its directory (or give it a new --dir), start it and add it again"
		case ae.code == http.StatusGatewayTimeout && strings.Contains(ae.text, peerAuthFailedText):
			advice = "; the leader reached it and it refused the leader's Raft handshake: restart it with the --cluster-secret-file and --cluster-salt of the cluster's other nodes (no salt if they have none), on an equeue whose Raft handshake is theirs, then add it again"
		case ae.code == http.StatusGatewayTimeout:
			advice = "; check that the node runs and that the leader can reach its Raft address (--cluster-raft), then add it again"
		}
	}
	return fmt.Errorf("cluster add %s at %s failed: %w%s", id, raftAddr, err, advice)
}
