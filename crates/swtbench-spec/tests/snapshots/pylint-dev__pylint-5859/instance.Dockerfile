FROM --platform=linux/x86_64 exec.env.x86_64.9b5fb55e60d85b0abb60e4:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
