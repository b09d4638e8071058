package serving_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/server/serving"
)

// auth is a PortAuth; nil booleans and "" mode are v1beta1's defaults.
func auth(address string, anonymous, webhook *bool, mode kubeletconfig.KubeletAuthorizationMode) serving.PortAuth {
	return serving.PortAuth{Address: address,
		Authentication: kubeletconfig.KubeletAuthentication{Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: anonymous},
			Webhook: kubeletconfig.KubeletWebhookAuthentication{Enabled: webhook}},
		Authorization: kubeletconfig.KubeletAuthorization{Mode: mode}}
}

func TestStandalone(t *testing.T) {
	const allow, webhook = kubeletconfig.KubeletAuthorizationModeAlwaysAllow, kubeletconfig.KubeletAuthorizationModeWebhook
	yes, no := ptr.To(true), ptr.To(false)
	open := auth(serving.Loopback, yes, no, allow)
	for _, tc := range []struct {
		name    string
		in      serving.PortAuth
		given   serving.Given
		want    serving.PortAuth
		changed []string
		err     string
	}{
		{name: "v1beta1's defaults", in: auth("0.0.0.0", nil, nil, ""), want: open,
			changed: []string{"anonymous=true", "webhook=false", "authorization-mode=AlwaysAllow", "address=127.0.0.1"}},
		{name: "flag defaults", in: auth("", no, yes, webhook), want: open,
			changed: []string{"anonymous=true", "webhook=false", "authorization-mode=AlwaysAllow", "address=127.0.0.1"}},
		{name: "address given", in: auth("0.0.0.0", no, yes, webhook), given: serving.Given{Address: "--address"},
			want: auth("0.0.0.0", yes, no, allow), changed: []string{"anonymous=true", "webhook=false", "authorization-mode=AlwaysAllow"}},
		{name: "anonymous given", in: auth("0.0.0.0", no, yes, webhook), given: serving.Given{Anonymous: "--anonymous-auth"},
			want: auth(serving.Loopback, no, no, allow), changed: []string{"webhook=false", "authorization-mode=AlwaysAllow", "address=127.0.0.1"}},
		{name: "webhook given off, mode defaulted", in: auth("0.0.0.0", no, no, webhook), given: serving.Given{Webhook: "--authentication-token-webhook"},
			want: open, changed: []string{"anonymous=true", "authorization-mode=AlwaysAllow", "address=127.0.0.1"}},
		{name: "loopback kept", in: auth("::1", yes, nil, allow), want: auth("::1", yes, no, allow), changed: []string{"webhook=false"}},
		{name: "no webhook: served as it is", in: auth("0.0.0.0", no, no, allow), want: auth("0.0.0.0", no, no, allow)},
		{name: "webhook authentication given", in: auth("0.0.0.0", no, yes, allow), given: serving.Given{Webhook: "authentication.webhook.enabled"},
			err: "authentication.webhook.enabled asks for webhook (TokenReview) authentication"},
		{name: "webhook authorization given", in: auth("0.0.0.0", no, no, webhook), given: serving.Given{AuthorizationMode: "--authorization-mode"},
			err: "--authorization-mode asks for webhook (SubjectAccessReview) authorization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := serving.Standalone(tc.in, tc.given)
			if tc.err != "" {
				require.Error(t, err)
				assert.True(t, errors.Is(err, serving.ErrWebhookWithoutAPIServer), "%v", err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.changed, changed)
		})
	}
}

// An agent without an API server: the settings its user gave (here
// none) are kept, the webhook defaults give way to the kubelet's
// standalone ones, on loopback; changed is for its log.
func ExampleStandalone() {
	p, changed, err := serving.Standalone(serving.PortAuth{Address: "0.0.0.0"}, serving.Given{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Address, *p.Authentication.Anonymous.Enabled, *p.Authentication.Webhook.Enabled, p.Authorization.Mode)
	fmt.Println(changed)
	// Output:
	// 127.0.0.1 true false AlwaysAllow
	// [anonymous=true webhook=false authorization-mode=AlwaysAllow address=127.0.0.1]
}
