/*
Copyright 2026 The mrtr-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyKustomization creates every object of every file that dir/kustomization.yaml lists as a
// resource, in order, and returns them. It reads plain resource files only (no patches,
// generators or prefixes), which is all a folder such as config/consumer holds, so that a file left
// out of the kustomization is left out here too. opts go to every Create (client.DryRunAll checks
// the objects against the API server's schema and CEL rules without keeping them).
func ApplyKustomization(ctx context.Context, c client.Client, dir string, opts ...client.CreateOption) ([]*unstructured.Unstructured, error) {
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := decodeFile(filepath.Join(dir, "kustomization.yaml"), func(d *yaml.YAMLOrJSONDecoder) error {
		return d.Decode(&kustomization)
	}); err != nil {
		return nil, err
	}
	var created []*unstructured.Unstructured
	for _, resource := range kustomization.Resources {
		objs, err := ApplyFile(ctx, c, filepath.Join(dir, resource), opts...)
		created = append(created, objs...)
		if err != nil {
			return created, err
		}
	}
	return created, nil
}

// ApplyFile creates every object of the YAML (or JSON) file at path, in order, and returns them.
func ApplyFile(ctx context.Context, c client.Client, path string, opts ...client.CreateOption) ([]*unstructured.Unstructured, error) {
	var created []*unstructured.Unstructured
	err := decodeFile(path, func(d *yaml.YAMLOrJSONDecoder) error {
		for {
			obj := &unstructured.Unstructured{}
			if err := d.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			if len(obj.Object) == 0 {
				continue // an empty document, e.g. after a trailing ---
			}
			if err := c.Create(ctx, obj, opts...); err != nil {
				return fmt.Errorf("create %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
			created = append(created, obj)
		}
	})
	return created, err
}

func decodeFile(path string, decode func(*yaml.YAMLOrJSONDecoder) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := decode(yaml.NewYAMLOrJSONDecoder(f, 4096)); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}
