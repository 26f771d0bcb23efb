package specs

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestRuleEnvironment(t *testing.T) {
	secrets := []string{
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
		"AWS_SESSION_TOKEN=FQoGZXIvYXdzEXAMPLE",
		"GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345",
		"OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz",
		"DB_PASSWORD=hunter2hunter2",
		"MYSQL_ROOT_PASSWD=hunter3",
		"STRIPE_APIKEY=rk_live_abcdefgh",
		"AZURE_CLIENT_SECRET=azsecretvalue",
		"GOOGLE_APPLICATION_CREDENTIALS=/secrets/gcp.json",
		"SSH_AUTH_SOCK=/tmp/ssh-XXXX/agent.123",
		"NPM_TOKEN=npm_abcdefghijklmnop",
		"DOCKER_AUTH_CONFIG={\"auths\":{}}",
		"REGISTRY_AUTH=dXNlcjpwYXNz",
		"KUBECONFIG=/root/.kube/config",
		"VAULT_ADDR=https://vault:8200",
		"SIGNING_PRIVATE_KEY=somekeymaterial",
		"my_app_key=lowercase",
		"CI_JOB_TOKEN=glcbt-xxxx",
		// Harmless names, credential values.
		"NOTES=AKIAIOSFODNN7EXAMPLE",
		"SLACK_HOOK_X=xoxb-1234567890-abcdefghij",
		"DATABASE_URL=postgres://app:s3cr3tpw@db:5432/app",
		"CERT=-----BEGIN OPENSSH PRIVATE KEY-----\nabc",
		"GH=github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
		"DB_PASS=hunter4", "MYSQL_PWD=hunter5", "SENTRY_DSN=https://abc@o1.ingest.example/1", "SESSION_JWT_SIGNER=x",
		"REDIS_URL=redis://:pw0rd@cache:6379/0",
		"PAYMENT=sk_live_51HabcdefghijKLMNOPqrstu",
		"BEARER=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		// Names of CI credentials beyond the usual words.
		"GPG_PASSPHRASE=correct horse battery staple", "AUTHORIZATION=x", "PGPASS=hunter2", "COOKIE=session=abc",
		"AZURE_STORAGE_CONNECTION_STRING=x", "SLACK_WEBHOOK_URL=x", "SESSION_COOKIE=x",
		// Harmless names, values of connection strings, webhooks, headers
		// and encoded keys.
		"CONN=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4==;EndpointSuffix=core.windows.net",
		"JDBC=jdbc:postgresql://db/app?user=app&password=hunter2",
		"SAS=https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=abcdEFGH1234%2B",
		"HOOK=https://hooks.slack.com/services/T0000000/B0000000/XXXXXXXXXXXXXXXXXXXXXXXX",
		"DHOOK=https://discord.com/api/webhooks/123456/abcdef",
		"HDR=Bearer ya29.a0AfH6SMBx7example", "G_OAUTH=ya29.a0AfH6SMBx7example", "BASIC=Basic dXNlcjpwYXNzd29yZA==",
		"SSH_KEY_B64=LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZLS0tLS0K",
		`DOCKER_CONFIG_JSON={"auths":{"ghcr.io":{"auth":"dXNlcjpnaHBfeHh4"}}}`,
		"PGPKEY=-----BEGIN PGP PRIVATE KEY BLOCK-----\nabc", "ADO=Server=x;Database=y;User Id=u;Password=p;",
		"LIBPQ=user=u password=p host=h", "MACHINES=machine h login u password p", "KUBECONFIG_DATA=YXBpVmVyc2lvbjog",
		"DO=dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"SENDGRID=SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789",
		"AZSAS=SharedAccessSignature sr=https%3A%2F%2Fns.servicebus.windows.net&sig=abc%2Bdef&se=1&skn=k",
	}
	keep := []string{"PATH=/usr/bin:/bin", "HOME=/root", "TERM=xterm", "HOSTNAME=abc123", "LANG=C.UTF-8",
		"AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=eu-west-1", "KEYBOARD=us", "URL=https://example.com/x",
		"NO_VALUE", "PWD=/src", "OLDPWD=/", "PASSAGE=3", "GOPATH=/go",
		"TOKENIZERS_PARALLELISM=false", "PASSWORD_STORE_DIR=/home/sandbox/.password-store",
		"AUTHOR=jane", "COOKIECUTTER_CONFIG=/src/cc.yaml", "PGPASSFILE=/src/.pgpass", "XDG_SESSION_TYPE=tty",
		"MOTD=Basic setup done", "HOOKS=pre-commit", "QUERY=a=1&b=2", "SIGNAL=TERM"}
	c := testContext()
	s := hostileSpec()
	s.Process.Env = append(append([]string{}, keep...), secrets...)
	ds := ruleEnvironment(c, s)
	if !slices.Equal(s.Process.Env, keep) {
		t.Fatalf("env after: %q\nwant %q", s.Process.Env, keep)
	}
	for _, kv := range secrets {
		name, value, _ := strings.Cut(kv, "=")
		wantDecision(t, ds, "process.env["+name+"]", Removed)
		data, _ := json.Marshal(ds)
		if strings.Contains(string(data), value) {
			t.Fatalf("value of %s appears in the decisions: %s", name, data)
		}
		if err := (&RefusalError{Decisions: ds}).Error(); strings.Contains(err, value) {
			t.Fatalf("value of %s appears in an error", name)
		}
	}

	// An entry without '=' has no name to give: its place is named.
	s.Process.Env = []string{"PATH=/bin", "PASSWORD:hunter2", "PASSWORD:aHVudGVyMg=="}
	entry := ruleEnvironment(c, s)
	if data, _ := json.Marshal(entry); strings.Contains(string(data), "hunter2") || strings.Contains(string(data), "aHVudGVy") || len(s.Process.Env) != 1 {
		t.Errorf("an entry without '=' that looks like a secret: %s, env %q", data, s.Process.Env)
	}
	if got := RemovedEnv(ds); len(got) != len(secrets) || !slices.Contains(got, "DB_PASS") {
		t.Errorf("RemovedEnv: %q, want every removed name", got)
	}

	t.Run("profile does not drop", func(t *testing.T) {
		c := testContext()
		c.Profile.DropSecretEnv = false
		s := hostileSpec()
		s.Process.Env = secrets
		ruleEnvironment(c, s)
		if len(s.Process.Env) != len(secrets) {
			t.Fatal("env changed although the profile keeps it")
		}
	})
}
