package fleetsim_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// One fleetsim process holds 1,000 SPs and 1,000 servers with an update in
// flight on every SP in well under 500 MiB of resident memory.
func TestThousandSPsAndServersInOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("memory bound over a 2,000-device fleet")
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 1000, Servers: 1000, MachineSets: 20, Seed: 1, SpeedUp: 1})
	require.NoError(t, err)
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s}, "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()

	img := mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompSP, Version: "9.9.9"}, 256<<10)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var mu sync.Mutex
	codes := map[int]int{}
	for _, sled := range s.Racks[0].Sleds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			url := fmt.Sprintf("%s/mgs/%d/sp/sled/%d/component/sp/update?id=%s&firmware_slot=0", srv.URL, sled.Cubby%2, sled.Cubby, uuid.New())
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(img))
			req.Header.Set("Content-Type", "application/octet-stream")
			req.Header.Set("api-version", mgs.APIVersion)
			resp, err := http.DefaultClient.Do(req)
			code := 0
			if err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Equal(t, map[int]int{http.StatusNoContent: 1000}, codes, "every SP accepted an update")
	resp, err := http.Get(srv.URL + "/cnapi/servers?limit=1000&extras=agents")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	rss := residentMiB(t)
	t.Logf("resident memory with 1,000 SPs (updates in flight) and 1,000 servers: %d MiB", rss)
	require.Less(t, rss, 500)
}

func residentMiB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			return kb / 1024
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
