FROM --platform=linux/x86_64 exec.env.x86_64.3a9417a9d4b5c62087edb6:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
