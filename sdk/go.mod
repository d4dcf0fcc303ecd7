module github.com/govgate/govgate/sdk

go 1.26.8
