package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// A chatRequest is the body of POST /v1/chat/completions, the fields the
// proxy and the fake model read of the usual shape.
type chatRequest struct {
	Model     string        `json:"model"`
	Messages  []chatMessage `json:"messages"`
	MaxTokens int64         `json:"max_tokens"`
	Stream    bool          `json:"stream"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// A usage is what a call cost in tokens, as model APIs report it: in the
// last event of a stream, or in the body of an answer.
type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// promptEstimate is the proxy's estimate of the prompt's tokens, made
// before the model has read it: a token per 4 bytes of every message,
// rounded up, the rule of thumb of English text. The model's tokenizer
// counts otherwise (a token per word, here), so the estimate can fall
// short: a call's usage may pass its reservation.
func (c *chatRequest) promptEstimate() int64 {
	var n int64
	for _, m := range c.Messages {
		n += (int64(len(m.Content)) + 3) / 4
	}
	return n
}

// A model is the fake model server: it answers a prompt of n words (n
// tokens, by its tokenizer) with min(2n, max_tokens) tokens, the words of
// the prompt over and over, streamed as server-sent events (one per
// token, then one with the usage, then [DONE]) or in one JSON body. It
// waits delay before each token, as a model does (a test's gate, when
// set, in its place), and stops when its caller leaves.
type model struct {
	delay time.Duration
	gate  <-chan struct{}
	// arrived, when set, is told of each request, which then waits for
	// its caller to leave before answering anything: a model slow to
	// start (a test's).
	arrived chan<- struct{}
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.arrived != nil {
		m.arrived <- struct{}{}
		<-r.Context().Done()
		return
	}
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 || req.MaxTokens <= 0 {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	var words []string
	for _, msg := range req.Messages {
		words = append(words, strings.Fields(msg.Content)...)
	}
	u := usage{PromptTokens: int64(len(words))}
	u.CompletionTokens = min(2*u.PromptTokens, req.MaxTokens)
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if !req.Stream {
		var answer []string
		for i := range u.CompletionTokens {
			answer = append(answer, words[i%int64(len(words))])
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"message": chatMessage{Role: "assistant", Content: strings.Join(answer, " ")}}},
			"usage":   u,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush() // the header now, the tokens as they come
	for i := range u.CompletionTokens {
		switch {
		case m.gate != nil:
			select {
			case <-m.gate:
			case <-r.Context().Done():
				return
			}
		case m.delay > 0:
			select {
			case <-time.After(m.delay):
			case <-r.Context().Done():
				return
			}
		}
		delta, _ := json.Marshal(words[i%int64(len(words))] + " ")
		if _, err := fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%s}}]}\n\n", delta); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	last, _ := json.Marshal(map[string]any{"choices": []any{}, "usage": u})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", last)
	_ = rc.Flush()
}
