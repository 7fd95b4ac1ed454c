package routing

import (
	"strings"
	"testing"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestIndex(t *testing.T) {
	tests := []struct {
		name   string
		server int
		env    []string
		want   int
		source string
	}{
		{"server wins over env", 7, []string{"OMPI_COMM_WORLD_RANK", "3"}, 7, "--server"},
		{"server 0", 0, nil, 0, "--server"},
		{"first variable wins", -1, []string{"SLURM_PROCID", "5", "OMPI_COMM_WORLD_RANK", "3", "PMI_RANK", "4"}, 3, "OMPI_COMM_WORLD_RANK"},
		{"PMIX_RANK alone", -1, []string{"PMIX_RANK", "12"}, 12, "PMIX_RANK"},
		{"empty variable is unset", -1, []string{"PMI_RANK", "", "X10_PLACE", "2"}, 2, "X10_PLACE"},
		{"spaces trimmed", -1, []string{"MP_CHILD", " 9\n"}, 9, "MP_CHILD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, src, err := Index(tt.server, env(tt.env...))
			if err != nil || got != tt.want || src != tt.source {
				t.Errorf("Index = %d, %q, %v; want %d, %q", got, src, err, tt.want, tt.source)
			}
		})
	}
}

func TestIndexErrors(t *testing.T) {
	_, _, err := Index(-1, env())
	if err == nil {
		t.Fatal("no error without an index")
	}
	for _, name := range IndexEnv {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	tests := []struct {
		server int
		env    []string
		want   string
	}{
		{-1, []string{"PMI_RANK", "abc"}, `PMI_RANK="abc" is not a rank index`},
		{-1, []string{"SLURM_PROCID", "-2"}, `SLURM_PROCID="-2": rank index must not be negative`},
		{-1, []string{"PMIX_RANK", "1e3"}, `PMIX_RANK="1e3" is not a rank index`},
		{-3, nil, "--server=-3: rank index must not be negative"},
	}
	for _, tt := range tests {
		i, _, err := Index(tt.server, env(tt.env...))
		if err == nil || err.Error() != tt.want || i != -1 {
			t.Errorf("Index(%d, %q) = %d, %v; want -1, %q", tt.server, tt.env, i, err, tt.want)
		}
	}
}

func TestIndexDefaultLookup(t *testing.T) {
	for _, name := range IndexEnv {
		t.Setenv(name, "")
	}
	t.Setenv("PCMP_PTP_RANK", "4")
	if i, src, err := Index(-1, nil); err != nil || i != 4 || src != "PCMP_PTP_RANK" {
		t.Errorf("Index = %d, %q, %v; want 4 from PCMP_PTP_RANK", i, src, err)
	}
}
