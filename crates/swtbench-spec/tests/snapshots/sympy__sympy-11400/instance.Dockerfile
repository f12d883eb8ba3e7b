FROM --platform=linux/x86_64 exec.env.x86_64.deec2122407a414e380748:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
