// Tools module: builds SeaweedFS's weed, the real S3 server (with the AWS IAM API) the tests run.
// Apache-2.0. Its own go.mod replaces one dependency, so `go install weed@VERSION` is refused: this
// module requires it and repeats that replace directive.
module provider-rook/hack/tools-s3

go 1.26.6

require github.com/seaweedfs/seaweedfs v0.0.0-20261109003541-7506e5f91cd6

replace github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0
