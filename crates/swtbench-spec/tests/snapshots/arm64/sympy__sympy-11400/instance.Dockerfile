FROM --platform=linux/arm64/v8 exec.env.arm64.deec2122407a414e380748:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
