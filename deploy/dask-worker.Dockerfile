# A Dask worker image with stepscope built from this checkout (docs/pod_scale.md, "Kubernetes"):
#   docker build -f deploy/dask-worker.Dockerfile -t REGISTRY/stepscope-dask:0.1.0 .
# The wheel is built where a C compiler is (the C accelerators), then installed with the Dask
# and fsspec extras and the S3/GCS file systems into a slim image of the same Python.
# tests/pod/test_operator_docs.py runs the two `pip` lines against a local venv.
FROM python:3.11 AS wheel
COPY . /src
RUN pip wheel --no-deps --wheel-dir /wheels /src

FROM python:3.11-slim
COPY --from=wheel /wheels /wheels
RUN pip install --no-cache-dir "$(ls /wheels/stepscope-*.whl)[dask,fsspec]" s3fs gcsfs
ENV OPENBLAS_NUM_THREADS=1
CMD ["dask", "worker", "--nthreads", "1", "--dashboard-address", "127.0.0.1:0"]
