package s3test

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
)

// Keys lists every object key under prefix in the bucket (all pages).
func (s *Server) Keys(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	token := ""
	for {
		q := map[string]string{"list-type": "2", "prefix": prefix}
		if token != "" {
			q["continuation-token"] = token
		}
		resp, err := s.Do(ctx, http.MethodGet, "", q, nil)
		if err != nil {
			return nil, err
		}
		if resp.Status != http.StatusOK {
			return nil, fmt.Errorf("s3test: list objects %q: status %d: %s", prefix, resp.Status, resp.Body)
		}
		var page struct {
			Contents []struct {
				Key string `xml:"Key"`
			} `xml:"Contents"`
			IsTruncated           bool   `xml:"IsTruncated"`
			NextContinuationToken string `xml:"NextContinuationToken"`
		}
		if err := xml.Unmarshal(resp.Body, &page); err != nil {
			return nil, fmt.Errorf("s3test: decode object list: %w", err)
		}
		for _, c := range page.Contents {
			keys = append(keys, c.Key)
		}
		if !page.IsTruncated || page.NextContinuationToken == "" {
			return keys, nil
		}
		token = page.NextContinuationToken
	}
}

// Uploads lists the keys of multipart uploads still open under prefix.
func (s *Server) Uploads(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	keyMarker, idMarker := "", ""
	for {
		q := map[string]string{"uploads": "", "prefix": prefix}
		if keyMarker != "" {
			q["key-marker"], q["upload-id-marker"] = keyMarker, idMarker
		}
		resp, err := s.Do(ctx, http.MethodGet, "", q, nil)
		if err != nil {
			return nil, err
		}
		if resp.Status != http.StatusOK {
			return nil, fmt.Errorf("s3test: list multipart uploads %q: status %d: %s", prefix, resp.Status, resp.Body)
		}
		var page struct {
			Uploads []struct {
				Key string `xml:"Key"`
			} `xml:"Upload"`
			IsTruncated        bool   `xml:"IsTruncated"`
			NextKeyMarker      string `xml:"NextKeyMarker"`
			NextUploadIDMarker string `xml:"NextUploadIdMarker"`
		}
		if err := xml.Unmarshal(resp.Body, &page); err != nil {
			return nil, fmt.Errorf("s3test: decode upload list: %w", err)
		}
		for _, u := range page.Uploads {
			keys = append(keys, u.Key)
		}
		if !page.IsTruncated || page.NextKeyMarker == "" {
			return keys, nil
		}
		keyMarker, idMarker = page.NextKeyMarker, page.NextUploadIDMarker
	}
}

// Put stores body under key (for tests that plant a stray object).
func (s *Server) Put(ctx context.Context, key string, body []byte) error {
	resp, err := s.Do(ctx, http.MethodPut, key, nil, body)
	if err != nil {
		return err
	}
	if resp.Status != http.StatusOK {
		return fmt.Errorf("s3test: put %s: status %d: %s", key, resp.Status, resp.Body)
	}
	return nil
}

// Get reads key whole; a missing key is a non-200 Status, not an error.
func (s *Server) Get(ctx context.Context, key string) (Response, error) {
	return s.Do(ctx, http.MethodGet, key, nil, nil)
}
