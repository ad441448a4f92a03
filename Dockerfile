# Builds fleetsaga's binaries (worker, starter, fleetsim) into one small image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /out/worker ./worker && \
    CGO_ENABLED=0 go build -o /out/starter ./starter && \
    CGO_ENABLED=0 go build -o /out/fleetsim ./fleetsim/cmd/fleetsim

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/ /usr/local/bin/
COPY fleetsim/specs /specs
ENTRYPOINT ["/usr/local/bin/worker"]
