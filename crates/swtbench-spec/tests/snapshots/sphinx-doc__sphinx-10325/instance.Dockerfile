FROM --platform=linux/x86_64 exec.env.x86_64.77d82541416cab86d0d86a:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
