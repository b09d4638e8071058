package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"

	"golang.org/x/net/websocket"
	"k8s.io/apimachinery/pkg/util/httpstream"
)

// The subprotocols of the API server's pods/log over a WebSocket (its
// responsewriters.StreamObject, wsstream's reader protocols): binary
// messages of the log's bytes, also when the client names none, or text
// messages of them in base64.
const (
	binaryLogProtocol = "binary.k8s.io"
	base64LogProtocol = "base64.binary.k8s.io"
)

// logWebSocket says whether a log request is a WebSocket one to serve so,
// and with which subprotocol: the first one offered that is served, or an
// error when none is. The kubelet has no WebSocket here (the API server
// upgrades pods/log itself and GETs /containerLogs plainly); a client of
// the node's own gets what it would get from the API server. A request
// that cannot be hijacked (not HTTP/1) is served plainly, as the kubelet's.
func logWebSocket(w http.ResponseWriter, r *http.Request) (upgrade bool, protocol string, err error) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || !httpstream.IsUpgradeRequest(r) {
		return false, "", nil
	}
	if _, ok := w.(http.Hijacker); !ok {
		return false, "", nil
	}
	offered := r.Header.Get("Sec-Websocket-Protocol") // as x/net/websocket reads it
	if strings.TrimSpace(offered) == "" {
		return true, "", nil
	}
	for _, p := range strings.Split(offered, ",") {
		if p = strings.TrimSpace(p); p == binaryLogProtocol || p == base64LogProtocol {
			return true, p, nil
		}
	}
	return false, "", fmt.Errorf("Sec-WebSocket-Protocol: unsupported value %q: a log is served as %s or %s",
		offered, binaryLogProtocol, base64LogProtocol)
}

// serveLogWebSocket upgrades the request and sends what stream writes, as
// the API server's pods/log does: an empty message first, then the log in
// messages of up to 32 KiB. The client sends nothing; its closing ends
// stream (ctx), which a hijacked connection's request context would not.
func serveLogWebSocket(w http.ResponseWriter, r *http.Request, protocol string,
	stream func(ctx context.Context, w io.Writer, flush func() error)) {
	websocket.Server{
		Handshake: func(c *websocket.Config, _ *http.Request) error {
			c.Protocol = nil
			if protocol != "" {
				c.Protocol = []string{protocol}
			}
			return nil
		},
		Handler: func(ws *websocket.Conn) {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			closed := make(chan struct{})
			go func() {
				defer close(closed)
				_, _ = io.Copy(io.Discard, ws)
				cancel()
			}()
			mw := &logMessages{ws: ws, base64: protocol == base64LogProtocol}
			if _, err := mw.Write(nil); err == nil {
				out := bufio.NewWriterSize(mw, 32<<10)
				stream(ctx, out, out.Flush)
				_ = out.Flush()
			}
			_ = ws.Close()
			<-closed
		},
	}.ServeHTTP(w, r)
}

// logMessages writes each Write as one WebSocket message.
type logMessages struct {
	ws     *websocket.Conn
	base64 bool
}

func (m *logMessages) Write(p []byte) (int, error) {
	if m.base64 {
		return len(p), websocket.Message.Send(m.ws, base64.StdEncoding.EncodeToString(p))
	}
	return len(p), websocket.Message.Send(m.ws, p)
}
