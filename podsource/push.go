package podsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PushConfig configures a PushHandler.
type PushConfig struct {
	// NodeName is required.
	NodeName string
	// Name is the source's name in the mux. Default "push".
	Name string
	// MaxBodyBytes caps a request body; larger requests get 413.
	// Default 1 MiB (the size limit of an object in etcd is 1.5 MiB).
	MaxBodyBytes int64
	Strict       bool
	Log          logr.Logger
	Metrics      *Metrics
}

// PushHandler is an http.Handler that accepts pods pushed to it, for users
// to mount on their own server (and protect: it has no authentication):
//
//   - POST, body a Pod manifest (YAML or JSON): adds it, or replaces the pod
//     of the same namespace/name. 201 Created (200 OK when replaced), body
//     {"namespace","name","uid"} with the name as the node will run it.
//     400 with {"message","errors":[{"field","type","value","detail"}]}
//     for a bad manifest, 413 over MaxBodyBytes.
//   - DELETE ?namespace=NS&name=NAME (NAME as in the manifest; namespace
//     default "default"): removes the pod. 204, or 404 if absent.
//   - GET: the pushed pods, as a v1 PodList.
//
// Its pods carry config.source "http", like the kubelet's other non-file
// source; their UIDs hash in "push:<Name>". Pushed pods live in memory:
// after a restart they must be pushed again. The source is ready as soon as
// Run starts.
type PushHandler struct {
	cfg  PushConfig
	sink Sink
	log  logr.Logger

	mu   sync.Mutex // held across sink updates, so they are in order
	pods map[string]*v1.Pod
	sent bool
}

// NewPushHandler returns a PushHandler sending to sink.
func NewPushHandler(cfg PushConfig, sink Sink) (*PushHandler, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("podsource: PushConfig.NodeName is required")
	}
	if cfg.Name == "" {
		cfg.Name = "push"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	return &PushHandler{cfg: cfg, sink: sink, log: cfg.Log.WithValues("source", cfg.Name), pods: map[string]*v1.Pod{}}, nil
}

// Name is the source's name in the mux.
func (h *PushHandler) Name() string { return h.cfg.Name }

// Run sends the (empty) initial set, which makes the source ready in the
// mux, and returns when ctx ends.
func (h *PushHandler) Run(ctx context.Context) error {
	h.mu.Lock()
	var err error
	if !h.sent {
		err = h.sendLocked(ctx)
	}
	h.mu.Unlock()
	if err != nil {
		return nilIfDone(ctx, err)
	}
	<-ctx.Done()
	return nil
}

type pushError struct {
	Field  string `json:"field,omitempty"`
	Type   string `json:"type,omitempty"`
	Value  any    `json:"value,omitempty"`
	Detail string `json:"detail,omitempty"`
}

type pushResponse struct {
	Message   string      `json:"message,omitempty"`
	Errors    []pushError `json:"errors,omitempty"`
	Namespace string      `json:"namespace,omitempty"`
	Name      string      `json:"name,omitempty"`
	UID       string      `json:"uid,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ServeHTTP implements http.Handler.
func (h *PushHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost, http.MethodPut:
		h.post(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	case http.MethodGet:
		h.mu.Lock()
		list := &v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
		for _, p := range h.sortedLocked() {
			list.Items = append(list.Items, *p.DeepCopy())
		}
		h.mu.Unlock()
		writeJSON(w, http.StatusOK, list)
	default:
		w.Header().Set("Allow", "GET, POST, PUT, DELETE")
		writeJSON(w, http.StatusMethodNotAllowed, pushResponse{Message: "method not allowed"})
	}
}

func (h *PushHandler) post(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.cfg.Metrics.invalidManifest(h.cfg.Name)
			writeJSON(w, http.StatusRequestEntityTooLarge, pushResponse{Message: fmt.Sprintf("manifest larger than %d bytes", h.cfg.MaxBodyBytes)})
			return
		}
		writeJSON(w, http.StatusBadRequest, pushResponse{Message: "reading body: " + err.Error()})
		return
	}
	origin := "push:" + h.cfg.Name
	parsed, err := Parse(body, ParseOptions{Kind: SourceHTTP, Origin: origin, NodeName: h.cfg.NodeName, Strict: h.cfg.Strict})
	if err == nil && parsed[0].Err != nil {
		err = parsed[0].Err
	}
	if err != nil {
		h.cfg.Metrics.invalidManifest(h.cfg.Name)
		h.log.Error(err, "Rejected pushed manifest", "remote", r.RemoteAddr)
		resp := pushResponse{Message: err.Error()}
		var me *ManifestError
		if errors.As(err, &me) {
			for _, fe := range me.Fields {
				resp.Errors = append(resp.Errors, pushError{Field: fe.Field, Type: string(fe.Type), Value: printable(fe), Detail: fe.Detail})
			}
		}
		writeJSON(w, http.StatusBadRequest, resp)
		return
	}
	pod := parsed[0].Pod
	h.mu.Lock()
	defer h.mu.Unlock()
	old, replaced := h.pods[parsed[0].Key]
	h.pods[parsed[0].Key] = pod
	if err := h.sendLocked(r.Context()); err != nil {
		if replaced {
			h.pods[parsed[0].Key] = old
		} else {
			delete(h.pods, parsed[0].Key)
		}
		writeJSON(w, http.StatusServiceUnavailable, pushResponse{Message: err.Error()})
		return
	}
	code := http.StatusCreated
	if replaced {
		code = http.StatusOK
	}
	writeJSON(w, code, pushResponse{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)})
}

func printable(fe *field.Error) any {
	if fe.Type == field.ErrorTypeRequired || fe.BadValue == nil {
		return nil
	}
	return fe.BadValue
}

func (h *PushHandler) delete(w http.ResponseWriter, r *http.Request) {
	ns, name := r.URL.Query().Get("namespace"), r.URL.Query().Get("name")
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	if name == "" {
		writeJSON(w, http.StatusBadRequest, pushResponse{Message: "query parameter name is required",
			Errors: []pushError{{Field: "name", Type: string(field.ErrorTypeRequired)}}})
		return
	}
	key := ns + "/" + name
	h.mu.Lock()
	defer h.mu.Unlock()
	old, ok := h.pods[key]
	if !ok {
		writeJSON(w, http.StatusNotFound, pushResponse{Message: "no pushed pod " + key})
		return
	}
	delete(h.pods, key)
	if err := h.sendLocked(r.Context()); err != nil {
		h.pods[key] = old
		writeJSON(w, http.StatusServiceUnavailable, pushResponse{Message: err.Error()})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *PushHandler) sortedLocked() []*v1.Pod {
	keys := make([]string, 0, len(h.pods))
	for k := range h.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*v1.Pod, 0, len(keys))
	for _, k := range keys {
		out = append(out, h.pods[k])
	}
	return out
}

func (h *PushHandler) sendLocked(ctx context.Context) error {
	h.sent = true
	return h.sink.Update(ctx, PodUpdate{Op: SET, Pods: h.sortedLocked(), Source: h.cfg.Name})
}
