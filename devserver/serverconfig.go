package devserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
)

// buildServerConfig builds the static server config. other holds seven free
// ports: gRPC of history, matching and worker, then the membership ports of
// frontend, history, matching and worker.
func buildServerConfig(cfg Config, sqlCfg, visCfg *config.SQL, advertise string, frontendPort, httpPort int, other []int) *config.Config {
	svc := func(grpcPort, membershipPort int) config.Service {
		return config.Service{RPC: config.RPC{
			GRPCPort:       grpcPort,
			MembershipPort: membershipPort,
			BindOnIP:       cfg.Host,
		}}
	}
	frontend := svc(frontendPort, other[3])
	frontend.RPC.HTTPPort = httpPort

	frontendAddr := net.JoinHostPort(advertise, strconv.Itoa(frontendPort))
	return &config.Config{
		Global: config.Global{
			Membership: config.Membership{
				MaxJoinDuration:  30 * time.Second,
				BroadcastAddress: advertise,
			},
			// No metrics listener (a noop metrics handler is installed) and
			// no pprof (port 0 disables it).
			PProf: config.PProf{Port: 0},
		},
		Persistence: persistence(cfg, sqlCfg, visCfg),
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {
					Enabled:                true,
					InitialFailoverVersion: 1,
					RPCAddress:             frontendAddr,
					HTTPAddress:            net.JoinHostPort(advertise, strconv.Itoa(httpPort)),
				},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": frontend,
			"history":  svc(other[0], other[4]),
			"matching": svc(other[1], other[5]),
			"worker":   svc(other[2], other[6]),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{
			Archival: config.ArchivalNamespaceDefaults{
				History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
				Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
			},
		},
		// The server's internal SDK clients (worker service) dial this.
		PublicClient: config.PublicClient{HostPort: frontendAddr},
	}
}

var (
	portsMu sync.Mutex
	// portsHandedOut remembers every port this process picked so that two
	// servers in one process never get the same port, even after one stops
	// (a restarted server must not join a stale membership ring of another).
	portsHandedOut = map[int]struct{}{}
)

// pickFreePorts returns n distinct free TCP ports on host that this process
// has not handed out before.
func pickFreePorts(host string, n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 100*n {
			return nil, errors.New("devserver: could not find free ports")
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("devserver: pick free port: %w", err)
		}
		held = append(held, l) // keep it open so the next pick differs
		p := l.Addr().(*net.TCPAddr).Port
		if _, used := portsHandedOut[p]; used {
			continue
		}
		portsHandedOut[p] = struct{}{}
		ports = append(ports, p)
	}
	return ports, nil
}

func checkBindable(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// persistence names the server's stores: visibility in its own SQLite file
// when visCfg is set (see prepareDatabase), otherwise beside the rest.
func persistence(cfg Config, sqlCfg, visCfg *config.SQL) config.Persistence {
	p := config.Persistence{
		DefaultStore:     "sqlite",
		VisibilityStore:  "sqlite",
		NumHistoryShards: cfg.NumHistoryShards,
		DataStores:       map[string]config.DataStore{"sqlite": {SQL: sqlCfg}},
	}
	if visCfg != nil {
		p.VisibilityStore = "sqlite-visibility"
		p.DataStores["sqlite-visibility"] = config.DataStore{SQL: visCfg}
	}
	return p
}
