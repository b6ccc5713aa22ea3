# Production image of the single ontoflow binary (serve, worker, migrate,
# users; dev works too but production uses an external Temporal cluster).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO off: the SQLite driver is pure Go, Postgres is pgx.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ontoflow ./cmd/ontoflow

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ontoflow /usr/local/bin/ontoflow
# WebDAV files live here (mount a volume shared by every serve replica).
VOLUME ["/var/lib/ontoflow"]
ENV ONTOFLOW_DATA_DIR=/var/lib/ontoflow \
    ONTOFLOW_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/ontoflow"]
CMD ["serve"]
