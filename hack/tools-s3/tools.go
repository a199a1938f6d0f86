//go:build tools

// Package tools pins the S3 server the tests build (see go.mod).
package tools

import _ "github.com/seaweedfs/seaweedfs/weed"
