package serving

import (
	"fmt"
	"net"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// PortAuth is Port's address and its authentication and authorization.
type PortAuth struct {
	Address        string
	Authentication kubeletconfig.KubeletAuthentication
	Authorization  kubeletconfig.KubeletAuthorization
}

// Given names the PortAuth settings that the user set (a flag, a config
// file's field) as an error should name them; "" is a default.
type Given struct{ Address, Anonymous, Webhook, AuthorizationMode string }

// Loopback is the address Standalone serves its defaults on.
const Loopback = "127.0.0.1"

// Standalone readies p for a node without an API server, where webhook
// authentication and authorization have no one to ask. Given, they are an
// error naming the setting (ErrWebhookWithoutAPIServer), as the kubelet
// refuses to start. Defaulted (nil Enabled and "" Mode are v1beta1's webhook
// defaults), every setting not given takes the kubelet's command-line
// default instead, which its standalone mode runs with: anonymous requests,
// no webhook, AlwaysAllow. That lets in whoever reaches the port, so the
// address (ReadOnlyPort's too), unless given, becomes Loopback. It returns
// the settings changed ("anonymous=true", ...), none when p needs no API
// server. Call it only when Port is served.
func Standalone(p PortAuth, given Given) (PortAuth, []string, error) {
	webhook := ptr.Deref(p.Authentication.Webhook.Enabled, true)
	mode := p.Authorization.Mode
	if mode == "" {
		mode = kubeletconfig.KubeletAuthorizationModeWebhook
	}
	if webhook && given.Webhook != "" {
		return p, nil, fmt.Errorf("%w: %s asks for webhook (TokenReview) authentication", ErrWebhookWithoutAPIServer, given.Webhook)
	}
	if mode == kubeletconfig.KubeletAuthorizationModeWebhook && given.AuthorizationMode != "" {
		return p, nil, fmt.Errorf("%w: %s asks for webhook (SubjectAccessReview) authorization", ErrWebhookWithoutAPIServer, given.AuthorizationMode)
	}
	if !webhook && mode != kubeletconfig.KubeletAuthorizationModeWebhook {
		return p, nil, nil // servable as it is
	}
	changed := standaloneDefaults(&p, given)
	return p, changed, nil
}

// standaloneDefaults sets the kubelet's command-line defaults, and
// Loopback, for the settings not given, and names those it changed.
func standaloneDefaults(p *PortAuth, given Given) []string {
	var changed []string
	if given.Anonymous == "" && !ptr.Deref(p.Authentication.Anonymous.Enabled, false) {
		p.Authentication.Anonymous.Enabled = ptr.To(true)
		changed = append(changed, "anonymous=true")
	}
	if given.Webhook == "" && ptr.Deref(p.Authentication.Webhook.Enabled, true) {
		p.Authentication.Webhook.Enabled = ptr.To(false)
		changed = append(changed, "webhook=false")
	}
	if given.AuthorizationMode == "" && p.Authorization.Mode != kubeletconfig.KubeletAuthorizationModeAlwaysAllow {
		p.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeAlwaysAllow
		changed = append(changed, "authorization-mode=AlwaysAllow")
	}
	if ip := net.ParseIP(p.Address); given.Address == "" && (ip == nil || !ip.IsLoopback()) {
		p.Address = Loopback
		changed = append(changed, "address="+Loopback)
	}
	return changed
}
