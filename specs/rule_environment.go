package specs

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ruleEnvironment(c *Context, s *rspec.Spec) []Decision {
	return dropSecretEnv(c.Profile, ensureProcess(s))
}

// dropSecretEnv removes variables whose name or value looks like a
// credential. Decisions carry the name only: the audit record must not
// become a second copy of the secret.
func dropSecretEnv(prof *Profile, p *rspec.Process) []Decision {
	if !prof.DropSecretEnv {
		return []Decision{notEnforced("environment", "process.env", "")}
	}
	var ds []Decision
	kept := []string{}
	for i, kv := range p.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok && (secretName(kv) || secretValue(kv)) {
			// No name to give: the whole entry may be the secret
			// ("PASSWORD:hunter2"), so it is named by its place only.
			ds = append(ds, Decision{Rule: "environment", Field: fmt.Sprintf("process.env[#%d]", i),
				Action: Removed, Layer: LayerNone, Why: "an entry without '=' that looks like a secret; named by its place, not its text"})
			continue
		}
		why := ""
		switch {
		case secretName(name):
			why = "its name looks like a secret; pass it to the job through a file the operator mounts, not the environment"
		case secretValue(value):
			why = "its value looks like a credential (key, token or URL with a password)"
		}
		if why == "" {
			kept = append(kept, kv)
			continue
		}
		field := "process.env[" + name + "]"
		if !plainEnvName(name) {
			// A name no shell writes may carry the secret itself
			// ("PASSWORD:aHVudGVyMg==" splits at its padding).
			field = fmt.Sprintf("process.env[#%d]", i)
		}
		ds = append(ds, Decision{Rule: "environment", Field: field,
			Action: Removed, Layer: LayerNone, Why: why})
	}
	if len(ds) == 0 {
		return []Decision{{Rule: "environment", Field: "process.env", Action: Kept,
			Layer: LayerNone, Why: "no variable looks like a secret"}}
	}
	p.Env = kept
	return ds
}

// plainEnvName tells whether a variable's name is one a shell writes:
// letters, digits and '_', not first a digit, at most 128 bytes.
func plainEnvName(name string) bool {
	if name == "" || len(name) > 128 || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// RemovedEnv are the names of the variables the environment rule
// removed, as its decisions name them.
func RemovedEnv(ds []Decision) []string {
	var names []string
	for _, d := range ds {
		if d.Rule == "environment" && d.Action == Removed {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(d.Field, "process.env["), "]"))
		}
	}
	return names
}

var (
	secretNameParts = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "APIKEY", "API_KEY", "ACCESS_KEY", "PRIVATE_KEY",
		"CREDENTIAL", "JWT", "AUTHORIZATION", "CONNECTION_STRING", "CONNSTR", "WEBHOOK", "KUBECONFIG", "NETRC"}
	secretNameSuffixes = []string{"_KEY", "_AUTH", "_PASS", "_PWD", "_DSN", "_COOKIE", "_COOKIES"}
	secretNamePrefixes = []string{"AWS_", "VAULT_"}
	secretNames        = []string{"SSH_AUTH_SOCK", "DOCKER_AUTH_CONFIG", "KUBECONFIG", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_SECRET", "NPM_TOKEN", "PGPASS", "COOKIE", "COOKIES"}
	// AWS_REGION says where, not who; Hugging Face's tokenizers read
	// TOKENIZERS_PARALLELISM (a boolean) in many ML test suites; pass's
	// PASSWORD_STORE_DIR is a path.
	harmlessNames = []string{"AWS_REGION", "AWS_DEFAULT_REGION", "TOKENIZERS_PARALLELISM", "PASSWORD_STORE_DIR"}
)

func secretName(name string) bool {
	n := strings.ToUpper(name)
	if hasOpt(harmlessNames, n) {
		return false
	}
	if hasOpt(secretNames, n) {
		return true
	}
	for _, part := range secretNameParts {
		if strings.Contains(n, part) {
			return true
		}
	}
	for _, suf := range secretNameSuffixes {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	for _, pre := range secretNamePrefixes {
		if strings.HasPrefix(n, pre) {
			return true
		}
	}
	return false
}

// secretValue recognises the credential formats whose prefixes are
// distinctive enough not to drop ordinary values. Compiled on first use:
// every bulkhead process would otherwise compile it at start-up, and only
// create and exec judge an environment.
var secretValueRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?:$|[^A-Z0-9])` +
		`|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}` +
		`|xox[abprs]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{20,}` +
		`|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|npm_[A-Za-z0-9]{30,}|AIza[0-9A-Za-z_-]{30,}` +
		`|hf_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{40,}|glc_[A-Za-z0-9+/=_-]{30,}` +
		`|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+` +
		`|-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|LS0tLS1CRUdJTi` + // the second is the first in base64
		`|dop_v1_[a-f0-9]{40,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}` +
		`|(?i:machine\s+\S+\s+login\s+\S+\s+password\s+\S)` + // a netrc line
		`|[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@` +
		// password=, AccountKey= of a query or connection string (JDBC, Azure)
		`|(?i:(?:^|[;&?\s])(?:password|passwd|pwd|accountkey|sharedaccesskey|sig|client_secret)=[^;&\s]+)` +
		`|hooks\.slack\.com/(?:services|workflows|triggers)/|(?i:discord(?:app)?\.com/api/webhooks/)` +
		`|^\s*(?i:bearer|basic|token)\s+\S{8,}|ya29\.[A-Za-z0-9_-]{10,}` +
		`|"auth"\s*:\s*"[A-Za-z0-9+/=]{8,}"`)
})

func secretValue(v string) bool {
	return secretValueRE().MatchString(v)
}
